def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    q = "SELECT id, name, status, error_notification_email, folder_id, owner_user_id, version FROM workflows WHERE name = ?"
    return {
        "workflow_before": rows(initial_db_path, q, ("Payroll Export to ADP",)),
        "workflow_after": rows(final_db_path, q, ("Payroll Export to ADP",)),
        "all_workflow_statuses_after": rows(final_db_path, "SELECT id, name, status FROM workflows ORDER BY id"),
        "final_answer": final_answer,
    }
