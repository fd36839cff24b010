"""``python -m philont`` runs the command line."""

from philont.cli import main

main()
