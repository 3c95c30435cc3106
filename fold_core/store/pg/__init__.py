"""The store in a PostgreSQL database (``recorder.PostgresRecorder``): its schema, sessions, state, bulk writes and verify."""
