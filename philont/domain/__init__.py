"""Pure domain rules of philont: plain values in, plain values out, no database."""
