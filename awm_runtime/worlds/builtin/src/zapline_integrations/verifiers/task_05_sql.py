def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    cq = "SELECT z.name, COUNT(*) AS errored_runs FROM zap_runs r JOIN zaps z ON z.id = r.zap_id JOIN workspaces w ON w.id = z.workspace_id WHERE w.name = 'Acme Ops' AND r.status = 'error' GROUP BY z.id ORDER BY errored_runs DESC"
    return {
        "errored_runs_per_zap_before": rows(initial_db_path, cq),
        "errored_runs_per_zap_after": rows(final_db_path, cq),
        "run_count_before": rows(initial_db_path, "SELECT COUNT(*) AS n FROM zap_runs")[0]["n"],
        "run_count_after": rows(final_db_path, "SELECT COUNT(*) AS n FROM zap_runs")[0]["n"],
        "final_answer": final_answer,
    }
