def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT v.id, v.title, v.visibility, v.view_count FROM videos v JOIN channels c ON c.id = v.channel_id "
           "WHERE c.owner_user_id = 1 ORDER BY v.view_count DESC")
    before = rows(initial_db_path, sql)
    return {
        "my_videos_by_views": before,
        "expected_title": before[0]["title"] if before else None,
        "expected_views": before[0]["view_count"] if before else None,
        "videos_unchanged": before == rows(final_db_path, sql),
        "final_answer": final_answer,
    }
