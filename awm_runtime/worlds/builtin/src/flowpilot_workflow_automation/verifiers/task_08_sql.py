def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT r.id, r.status, r.error_message, r.created_at FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id WHERE w.name = ? ORDER BY r.created_at DESC, r.id DESC"
    runs_after = rows(final_db_path, q, ("Customer Churn Alert",))
    failed = [r for r in runs_after if r["status"] == "failed"]
    latest_id = failed[0]["id"] if failed else -1
    return {
        "runs_before": rows(initial_db_path, q, ("Customer Churn Alert",)),
        "runs_after": runs_after,
        "latest_failed_run_step_log": rows(final_db_path, "SELECT sr.position, s.name, sr.status, sr.error_message FROM step_runs sr LEFT JOIN workflow_steps s ON s.id = sr.step_id WHERE sr.run_id = ? ORDER BY sr.position", (latest_id,)),
        "final_answer": final_answer,
    }
