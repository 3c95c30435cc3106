"""host.db opened by several connections at once on a fresh store (the daemon's threads, the Pinboard).

Each connection reads the schema version, then migrates; the version is read
again inside the migration's write transaction, so a connection that lost the
race skips what the winner applied instead of failing with "table … already
exists".
"""

from __future__ import annotations

import threading

from fold_host.hostdb import MIGRATIONS, open_host_db


def test_connections_opening_a_fresh_host_db_together_all_succeed(tmp_path):
    for attempt in range(5):
        store = tmp_path / f"store-{attempt}"
        barrier = threading.Barrier(6)
        errors, versions = [], []

        def open_one() -> None:
            barrier.wait()
            try:
                with open_host_db(store) as db:
                    versions.append(db.schema_version)
            except Exception as error:  # noqa: BLE001 - the failure under test
                errors.append(error)

        threads = [threading.Thread(target=open_one) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        assert versions == [len(MIGRATIONS)] * 6
