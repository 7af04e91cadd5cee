def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    repo = query(initial_db_path, "SELECT r.id FROM repositories r JOIN organizations o ON o.id = r.org_id "
                                  "WHERE o.login = 'nimbus-labs' AND r.name = 'lumen-api'")
    if len(repo) != 1:
        return {"result": "others"}
    repo_id = repo[0][0]

    pr_sql = ("SELECT id, number, state, merge_method, merge_commit_sha, head_branch, base_branch FROM pull_requests "
              "WHERE repository_id = ? AND title = 'Add cursor-based pagination to list endpoints'")
    pr_before = query(initial_db_path, pr_sql, (repo_id,))
    pr_after = query(final_db_path, pr_sql, (repo_id,))
    if len(pr_before) != 1 or len(pr_after) != 1 or pr_before[0][2] != "open":
        return {"result": "others"}
    pr_id, pr_number, state, method, merge_sha, head_branch, base_branch = pr_after[0]
    if state != "merged" or method != "squash" or not merge_sha:
        return {"result": "others"}

    rev_sql = "SELECT id, state, body FROM pull_request_reviews WHERE pull_request_id = ?"
    rev_before = {r[0] for r in query(initial_db_path, rev_sql, (pr_id,))}
    new_reviews = [r for r in query(final_db_path, rev_sql, (pr_id,)) if r[0] not in rev_before]
    if not any(r[1] == "approved" and "lgtm, nice work" in " ".join((r[2] or "").lower().split()) for r in new_reviews):
        return {"result": "others"}

    base = query(final_db_path, "SELECT id, head_commit_sha FROM branches WHERE repository_id = ? AND name = ?", (repo_id, base_branch))
    if len(base) != 1 or base[0][1] != merge_sha:
        return {"result": "others"}
    if not query(final_db_path, "SELECT id FROM commits WHERE sha = ? AND branch_id = ?", (merge_sha, base[0][0])):
        return {"result": "others"}

    head_sql = "SELECT id FROM branches WHERE repository_id = ? AND name = ?"
    if not query(initial_db_path, head_sql, (repo_id, head_branch)) or query(final_db_path, head_sql, (repo_id, head_branch)):
        return {"result": "others"}

    issue_sql = "SELECT id, state, state_reason FROM issues WHERE repository_id = ? AND title = 'Support cursor pagination on list endpoints'"
    iss_before = query(initial_db_path, issue_sql, (repo_id,))
    iss_after = query(final_db_path, issue_sql, (repo_id,))
    if len(iss_before) != 1 or len(iss_after) != 1 or iss_before[0][1] != "open":
        return {"result": "others"}
    if iss_after[0][1] != "closed" or iss_after[0][2] != "completed":
        return {"result": "others"}
    com_sql = "SELECT id, body FROM comments WHERE issue_id = ?"
    com_before = {c[0] for c in query(initial_db_path, com_sql, (iss_after[0][0],))}
    new_comments = [c for c in query(final_db_path, com_sql, (iss_after[0][0],)) if c[0] not in com_before]
    token = f"#{pr_number}"
    if not any(token in (c[1] or "") and "fixed in" in (c[1] or "").lower() for c in new_comments):
        return {"result": "others"}

    rel_sql = "SELECT name, target_branch, is_draft, published_at FROM releases WHERE repository_id = ? AND tag_name = 'v2.4.0'"
    if query(initial_db_path, rel_sql, (repo_id,)):
        return {"result": "others"}
    rel = query(final_db_path, rel_sql, (repo_id,))
    if len(rel) != 1 or rel[0][0].strip() != "Lumen API 2.4.0" or rel[0][1] != "main" or rel[0][2] != 0 or rel[0][3] is None:
        return {"result": "others"}

    ms_sql = "SELECT state FROM milestones WHERE repository_id = ? AND title = 'v2.4'"
    ms_before = query(initial_db_path, ms_sql, (repo_id,))
    ms_after = query(final_db_path, ms_sql, (repo_id,))
    if len(ms_before) != 1 or len(ms_after) != 1 or ms_before[0][0] != "open" or ms_after[0][0] != "closed":
        return {"result": "others"}
    return {"result": "complete"}
