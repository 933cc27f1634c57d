"""Run history: batches kept in a local database (store), compared (compare) and
written as self-contained HTML reports (report)."""
