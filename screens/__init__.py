"""One Textual screen per view."""
