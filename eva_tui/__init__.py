"""Eva's Textual app: the trusted surface (SPEC §9)."""
