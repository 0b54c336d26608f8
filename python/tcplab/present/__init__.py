"""Presentation: console tables (`console`), plot specs as data (`plotspecs`), figures
(`plots`) and the self-contained HTML report (`report`)."""
