ALTER TABLE web_click_ids DROP COLUMN sealed_user_agent;
