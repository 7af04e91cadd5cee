def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    dev_sql = ("SELECT d.id, d.model, d.firmware_version FROM devices d JOIN homes h ON h.id = d.home_id "
               "WHERE d.name = 'Front Door Lock' AND h.name = 'Maple Street House'")
    before = q(initial_db_path, dev_sql)
    after = q(final_db_path, dev_sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    device_id, model, old_version = before[0]
    latest = q(initial_db_path, "SELECT version FROM firmware_releases WHERE model = ? AND channel = 'stable' ORDER BY released_at DESC, id DESC LIMIT 1", (model,))
    if not latest:
        return {"result": "others"}
    latest_version = latest[0][0]
    if old_version == latest_version or after[0][2] != latest_version:
        return {"result": "others"}
    old_job_ids = set(r[0] for r in q(initial_db_path, "SELECT id FROM firmware_update_jobs"))
    new_jobs = [r for r in q(final_db_path, "SELECT id, status, to_version FROM firmware_update_jobs WHERE device_id = ?", (device_id,)) if r[0] not in old_job_ids]
    if not any(status == "completed" and to_version == latest_version for _, status, to_version in new_jobs):
        return {"result": "others"}
    others = "SELECT id, firmware_version FROM devices WHERE id != ? ORDER BY id"
    if q(initial_db_path, others, (device_id,)) != q(final_db_path, others, (device_id,)):
        return {"result": "others"}
    return {"result": "complete"}
