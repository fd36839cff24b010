"""Reliability tests: crashes, concurrent processes, hostile input, disk faults, busy retries."""
