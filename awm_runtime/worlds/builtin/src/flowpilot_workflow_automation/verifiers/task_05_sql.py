def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    name = "Contract Renewal Reminder"
    wf = rows(final_db_path, "SELECT * FROM workflows WHERE name = ?", (name,))
    wid = wf[0]["id"] if wf else -1
    return {
        "workflow_before": rows(initial_db_path, "SELECT * FROM workflows WHERE name = ?", (name,)),
        "workflow_after": wf,
        "legal_folder_and_team": {
            "folders": rows(final_db_path, "SELECT id, name FROM folders WHERE name = 'Legal'"),
            "teams": rows(final_db_path, "SELECT id, name FROM teams WHERE name = 'Legal'"),
        },
        "steps_after": rows(final_db_path, "SELECT position, name, action_type, config_json FROM workflow_steps WHERE workflow_id = ? ORDER BY position", (wid,)),
        "triggers_after": rows(final_db_path, "SELECT name, trigger_type, cron_expression, timezone, is_enabled FROM triggers WHERE workflow_id = ?", (wid,)),
        "tags_after": rows(final_db_path, "SELECT t.name FROM workflow_tags wt JOIN tags t ON t.id = wt.tag_id WHERE wt.workflow_id = ?", (wid,)),
        "final_answer": final_answer,
    }
