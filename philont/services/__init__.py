"""Services: each takes a Session, may flush, never commits, and returns pydantic read models."""
