"""Helpers for testing code that uses philont: factories and schema comparison."""
