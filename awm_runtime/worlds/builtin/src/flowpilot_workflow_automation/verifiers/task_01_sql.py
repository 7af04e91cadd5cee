def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT t.* FROM triggers t JOIN workflows w ON w.id = t.workflow_id WHERE w.name = ? ORDER BY t.id"
    return {
        "daily_sales_digest_triggers_before": rows(initial_db_path, q, ("Daily Sales Digest",)),
        "daily_sales_digest_triggers_after": rows(final_db_path, q, ("Daily Sales Digest",)),
        "final_answer": final_answer,
    }
