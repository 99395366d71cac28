"""The seed tutorials' examples, run on opweave (see README.md here)."""
