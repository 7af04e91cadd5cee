def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import re

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    if not final_answer:
        return {"result": "others"}
    top = q(initial_db_path,
            "SELECT v.title, v.view_count FROM videos v JOIN channels c ON c.id = v.channel_id "
            "WHERE c.owner_user_id = 1 AND v.status != 'removed' ORDER BY v.view_count DESC LIMIT 1")
    if not top:
        return {"result": "others"}
    title, views = top[0]
    snapshot = "SELECT id, title, visibility, view_count, like_count FROM videos ORDER BY id"
    if q(initial_db_path, snapshot) != q(final_db_path, snapshot):
        return {"result": "others"}
    text = " ".join(final_answer.lower().split())
    if " ".join(title.lower().split()) not in text:
        return {"result": "others"}
    compact = re.sub(r"(?<=\d)[,\s](?=\d{3}\b)", "", text)
    numbers = re.findall(r"\d+", compact)
    if str(views) not in numbers:
        return {"result": "others"}
    return {"result": "complete"}
