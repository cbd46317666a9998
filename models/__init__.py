"""Adapters to real models: llama.cpp chat/planning, embedders, packaged-model resolution."""
