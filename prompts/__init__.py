"""Prompt templates (string.Template syntax: $name). Data only; rendered by awm_runtime._prompts."""
