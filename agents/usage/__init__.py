"""Usage as an account: the ledger every settle writes, the quotas kept against it, and the
reports read from it (``/api/usage/``, the admin's dashboard)."""
