def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT a.id, a.run_id, a.status, a.comment, a.decided_at, r.status AS run_status, r.input_json, sr.status AS step_run_status FROM approvals a JOIN workflow_runs r ON r.id = a.run_id JOIN step_runs sr ON sr.id = a.step_run_id ORDER BY a.id"
    return {
        "approvals_before": rows(initial_db_path, q),
        "approvals_after": rows(final_db_path, q),
        "final_answer": final_answer,
    }
