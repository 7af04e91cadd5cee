def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    name = "Calendly Bookings to Slack"
    z = rows(final_db_path, "SELECT z.*, e.name AS trigger_event, c.label AS trigger_connection FROM zaps z LEFT JOIN app_events e ON e.id = z.trigger_event_id LEFT JOIN connections c ON c.id = z.trigger_connection_id WHERE z.name = ?", (name,))
    zid = z[0]["id"] if z else -1
    steps = rows(final_db_path, "SELECT s.id, s.position, s.step_type, s.title, e.name AS event_name, c.label AS connection_label FROM zap_steps s LEFT JOIN app_events e ON e.id = s.app_event_id LEFT JOIN connections c ON c.id = s.connection_id WHERE s.zap_id = ? ORDER BY s.position", (zid,))
    sids = [s["id"] for s in steps] or [-1]
    marks = ",".join("?" for _ in sids)
    return {
        "zap_before": rows(initial_db_path, "SELECT id FROM zaps WHERE name = ?", (name,)),
        "zap_after": z,
        "steps_after": steps,
        "field_mappings_after": rows(final_db_path, f"SELECT step_id, target_field, source_expression FROM field_mappings WHERE step_id IN ({marks})", tuple(sids)),
        "final_answer": final_answer,
    }
