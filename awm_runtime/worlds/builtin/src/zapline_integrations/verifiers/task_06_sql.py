def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT r.id, r.status, r.error_message, r.started_at FROM zap_runs r JOIN zaps z ON z.id = r.zap_id WHERE z.name = ? ORDER BY r.started_at DESC, r.id DESC"
    runs = rows(final_db_path, q, ("Shopify Orders to Google Sheets",))
    errored = [r for r in runs if r["status"] == "error"]
    rid = errored[0]["id"] if errored else -1
    return {
        "runs_before": rows(initial_db_path, q, ("Shopify Orders to Google Sheets",)),
        "runs_after": runs,
        "latest_errored_run_attempts": rows(final_db_path, "SELECT a.step_position, s.title, a.status, a.http_status, a.error_message FROM run_attempts a LEFT JOIN zap_steps s ON s.id = a.step_id WHERE a.run_id = ? ORDER BY a.step_position", (rid,)),
        "final_answer": final_answer,
    }
