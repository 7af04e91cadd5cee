def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    dev = ("SELECT d.id, d.name, d.device_type, d.state, d.target_temperature, d.brightness FROM devices d "
           "JOIN homes h ON h.id = d.home_id WHERE h.name = 'Lakeside Cabin' ORDER BY d.id")
    auto = ("SELECT a.id, a.name, a.is_enabled FROM automations a JOIN homes h ON h.id = a.home_id "
            "WHERE h.name = 'Lakeside Cabin' ORDER BY a.id")
    other = ("SELECT d.id, d.name, d.state, d.target_temperature FROM devices d JOIN homes h ON h.id = d.home_id "
             "WHERE h.name != 'Lakeside Cabin' ORDER BY d.id")
    return {
        "cabin_devices_before": rows(initial_db_path, dev),
        "cabin_devices_after": rows(final_db_path, dev),
        "cabin_automations_before": rows(initial_db_path, auto),
        "cabin_automations_after": rows(final_db_path, auto),
        "other_home_devices_unchanged": rows(initial_db_path, other) == rows(final_db_path, other),
        "final_answer": final_answer,
    }
