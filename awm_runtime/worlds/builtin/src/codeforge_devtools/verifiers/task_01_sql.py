def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT w.id, r.name AS repository, w.url, w.events, w.content_type, w.is_active FROM webhooks w "
           "JOIN repositories r ON r.id = w.repository_id ORDER BY w.id")
    return {
        "webhooks_before": query(initial_db_path, sql),
        "webhooks_after": query(final_db_path, sql),
        "final_answer": final_answer,
    }
