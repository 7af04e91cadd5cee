def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = "SELECT a.id, h.name AS home_name, a.name, a.trigger_type, a.is_enabled FROM automations a JOIN homes h ON h.id = a.home_id ORDER BY a.id"
    return {
        "automations_before": rows(initial_db_path, sql),
        "automations_after": rows(final_db_path, sql),
        "final_answer": final_answer,
    }
