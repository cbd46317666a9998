"""Checks the project runs on itself (lint-time only; nothing here ships with Eva)."""
