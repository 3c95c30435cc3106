"""host.db's tables in the store's PostgreSQL database (``database.PgHostDB``), and the work several hosts share."""
