def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    latest = q(initial_db_path, "SELECT version FROM firmware_releases WHERE model = 'Lumina A19' AND channel = 'stable' ORDER BY released_at DESC, id DESC LIMIT 1")
    if not latest:
        return {"result": "others"}
    latest_version = latest[0][0]
    bulb_sql = ("SELECT d.id, d.firmware_version FROM devices d JOIN homes h ON h.id = d.home_id "
                "WHERE h.name = 'Maple Street House' AND d.model = 'Lumina A19' ORDER BY d.id")
    before = dict(q(initial_db_path, bulb_sql))
    after = dict(q(final_db_path, bulb_sql))
    if not before or set(before) != set(after):
        return {"result": "others"}
    outdated = [dev_id for dev_id, version in before.items() if version != latest_version]
    if not outdated:
        return {"result": "others"}
    if any(version != latest_version for version in after.values()):
        return {"result": "others"}
    old_job_ids = set(r[0] for r in q(initial_db_path, "SELECT id FROM firmware_update_jobs"))
    new_jobs = [r for r in q(final_db_path, "SELECT id, device_id, status, to_version FROM firmware_update_jobs") if r[0] not in old_job_ids]
    for dev_id in outdated:
        if not any(j[1] == dev_id and j[2] == "completed" and j[3] == latest_version for j in new_jobs):
            return {"result": "others"}
    ids = ",".join(str(i) for i in before)
    others = f"SELECT id, firmware_version FROM devices WHERE id NOT IN ({ids}) ORDER BY id"
    if q(initial_db_path, others) != q(final_db_path, others):
        return {"result": "others"}
    return {"result": "complete"}
