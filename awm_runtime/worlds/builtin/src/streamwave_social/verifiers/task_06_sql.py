def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT v.id, v.title, COUNT(cm.id) AS comment_count FROM videos v JOIN channels c ON c.id = v.channel_id "
           "LEFT JOIN comments cm ON cm.video_id = v.id WHERE c.owner_user_id = 1 GROUP BY v.id ORDER BY v.id")
    per_video = rows(initial_db_path, sql)
    total = "SELECT COUNT(*) AS n FROM comments"
    return {
        "comments_per_video": per_video,
        "expected_total": sum(r["comment_count"] for r in per_video),
        "all_comments_before": rows(initial_db_path, total)[0]["n"],
        "all_comments_after": rows(final_db_path, total)[0]["n"],
        "final_answer": final_answer,
    }
