def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT r.id, r.status, r.error_message, r.created_at FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id WHERE w.name = ? ORDER BY r.id"
    after = rows(final_db_path, q, ("Nightly Data Warehouse Sync",))
    return {
        "runs_before": rows(initial_db_path, q, ("Nightly Data Warehouse Sync",)),
        "runs_after": after,
        "failed_count": sum(1 for r in after if r["status"] == "failed"),
        "final_answer": final_answer,
    }
