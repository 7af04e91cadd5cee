def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT s.id, s.position, s.name, s.action_type, s.config_json, s.on_failure, s.retry_count FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id WHERE w.name = ? ORDER BY s.position"
    return {
        "employee_onboarding_steps_before": rows(initial_db_path, q, ("Employee Onboarding",)),
        "employee_onboarding_steps_after": rows(final_db_path, q, ("Employee Onboarding",)),
        "final_answer": final_answer,
    }
