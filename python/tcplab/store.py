"""`tcplab.store.Store`, where notebooks found it before the results database moved to
`tcplab.study.store`; kept so their imports keep working."""

from .study.store import Store, StoreBusy, StoreError

__all__ = ["Store", "StoreBusy", "StoreError"]
