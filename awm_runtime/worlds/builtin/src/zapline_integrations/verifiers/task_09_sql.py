def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT s.*, z.name AS zap_name FROM schedules s JOIN zaps z ON z.id = s.zap_id ORDER BY s.id"
    return {"schedules_before": rows(initial_db_path, q), "schedules_after": rows(final_db_path, q), "final_answer": final_answer}
