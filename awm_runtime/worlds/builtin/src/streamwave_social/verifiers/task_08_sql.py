def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    spam = ("SELECT cm.id, v.title AS video_title, c.name AS channel_name, cm.body FROM comments cm "
            "JOIN users u ON u.id = cm.user_id JOIN videos v ON v.id = cm.video_id JOIN channels c ON c.id = v.channel_id "
            "WHERE u.username = 'spambot_4421' ORDER BY cm.id")
    reports = "SELECT id, reporter_user_id, target_type, target_id, reason, status FROM reports ORDER BY id"
    count = "SELECT COUNT(*) AS n FROM comments"
    return {
        "spambot_comments_before": rows(initial_db_path, spam),
        "spambot_comments_after": rows(final_db_path, spam),
        "reports_before": rows(initial_db_path, reports),
        "reports_after": rows(final_db_path, reports),
        "comment_count_before": rows(initial_db_path, count)[0]["n"],
        "comment_count_after": rows(final_db_path, count)[0]["n"],
        "final_answer": final_answer,
    }
