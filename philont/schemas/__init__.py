"""Pydantic v2 read models (what services return) and input models."""
