def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT id, workspace_id, name, status, status_reason FROM zaps ORDER BY id"
    return {"zaps_before": rows(initial_db_path, q), "zaps_after": rows(final_db_path, q), "final_answer": final_answer}
