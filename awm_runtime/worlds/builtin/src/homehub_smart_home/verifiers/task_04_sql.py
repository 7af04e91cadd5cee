def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    scenes = "SELECT s.id, h.name AS home_name, s.name, s.description FROM scenes s JOIN homes h ON h.id = s.home_id ORDER BY s.id"
    actions = ("SELECT sa.id, sa.scene_id, s.name AS scene_name, d.name AS device_name, sa.action, sa.value, sa.sort_order "
               "FROM scene_actions sa JOIN scenes s ON s.id = sa.scene_id JOIN devices d ON d.id = sa.device_id "
               "WHERE lower(s.name) LIKE '%movie%' ORDER BY sa.id")
    return {
        "scenes_before": rows(initial_db_path, scenes),
        "scenes_after": rows(final_db_path, scenes),
        "movie_scene_actions_after": rows(final_db_path, actions),
        "final_answer": final_answer,
    }
