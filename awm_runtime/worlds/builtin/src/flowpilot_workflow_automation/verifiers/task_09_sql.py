def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    wf_q = "SELECT id, name, status, folder_id, version FROM workflows WHERE name IN ('Employee Onboarding', 'Contractor Onboarding') ORDER BY id"
    after = rows(final_db_path, wf_q)
    ids = [w["id"] for w in after] + [-1, -1]
    step_q = "SELECT workflow_id, position, name, action_type, config_json FROM workflow_steps WHERE workflow_id IN (?, ?) ORDER BY workflow_id, position"
    return {
        "workflows_before": rows(initial_db_path, wf_q),
        "workflows_after": after,
        "steps_before": rows(initial_db_path, step_q, (ids[0], ids[1])),
        "steps_after": rows(final_db_path, step_q, (ids[0], ids[1])),
        "folders_after": rows(final_db_path, "SELECT id, name, parent_folder_id FROM folders WHERE name IN ('HR', 'Contractors')"),
        "runs_after": rows(final_db_path, "SELECT id, workflow_id, status, input_json, error_message FROM workflow_runs WHERE workflow_id IN (?, ?) ORDER BY id", (ids[0], ids[1])),
        "final_answer": final_answer,
    }
