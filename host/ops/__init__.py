"""Operations on an installation: backup and restore, doctor, metrics, moving a store, OPML import."""
