"""The ``philont`` command line (typer): ``app`` holds every command, ``main`` runs it."""

from philont.cli.app import app, main

__all__ = ["app", "main"]
