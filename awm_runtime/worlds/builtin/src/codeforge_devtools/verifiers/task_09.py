def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    repo = query(initial_db_path, "SELECT r.id FROM repositories r JOIN organizations o ON o.id = r.org_id "
                                  "WHERE o.login = 'quillstack' AND r.name = 'forge-cli'")
    if len(repo) != 1:
        return {"result": "others"}
    repo_id = repo[0][0]
    main = query(initial_db_path, "SELECT head_commit_sha FROM branches WHERE repository_id = ? AND name = 'main'", (repo_id,))
    br_sql = "SELECT id, head_commit_sha FROM branches WHERE repository_id = ? AND name = 'hotfix/token-refresh'"
    if len(main) != 1 or query(initial_db_path, br_sql, (repo_id,)):
        return {"result": "others"}
    branch = query(final_db_path, br_sql, (repo_id,))
    if len(branch) != 1 or branch[0][1] != main[0][0]:
        return {"result": "others"}

    pr_sql = ("SELECT id, number, title, state, is_draft, base_branch FROM pull_requests "
              "WHERE repository_id = ? AND head_branch = 'hotfix/token-refresh'")
    if query(initial_db_path, pr_sql, (repo_id,)):
        return {"result": "others"}
    prs = query(final_db_path, pr_sql, (repo_id,))
    if len(prs) != 1:
        return {"result": "others"}
    _, number, title, state, is_draft, base = prs[0]
    if " ".join((title or "").split()) != "Fix token refresh race during upload":
        return {"result": "others"}
    if state != "open" or is_draft != 1 or base != "main":
        return {"result": "others"}

    issue = query(initial_db_path, "SELECT id FROM issues WHERE repository_id = ? AND title = 'forge deploy hangs when token expires mid-upload'", (repo_id,))
    if len(issue) != 1:
        return {"result": "others"}
    com_sql = "SELECT id, body FROM comments WHERE issue_id = ?"
    before_ids = {c[0] for c in query(initial_db_path, com_sql, (issue[0][0],))}
    new_comments = [c for c in query(final_db_path, com_sql, (issue[0][0],)) if c[0] not in before_ids]
    token = f"#{number}"
    if not any(token in (c[1] or "") and "fix in progress" in (c[1] or "").lower() for c in new_comments):
        return {"result": "others"}
    return {"result": "complete"}
