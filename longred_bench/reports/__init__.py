"""Report builders: each reads result records and writes one table or figure (Markdown + PNG)."""


def duration(seconds: float | None) -> str:
    """Wall time as ``"1 h 02 min 03 s"`` / ``"2 min 03 s"`` (``"not recorded"`` for None)."""
    if seconds is None:
        return "not recorded"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"
