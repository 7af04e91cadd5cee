def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT a.id, z.name AS zap_name, a.status, a.severity, a.message, a.resolved_at, a.resolved_by_user_id FROM error_alerts a LEFT JOIN zaps z ON z.id = a.zap_id ORDER BY a.id"
    return {"alerts_before": rows(initial_db_path, q), "alerts_after": rows(final_db_path, q), "final_answer": final_answer}
