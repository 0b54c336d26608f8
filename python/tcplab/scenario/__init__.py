"""Scenario files: the pydantic model (`model`), loading with overrides (`load`, `schema`),
the rules across fields (`checks`), TCP stack profiles (`tcp_profile`), link traces
(`traces`), the normalized form the core runs (`normalize`) and what the core makes of a
path (`topology`)."""
