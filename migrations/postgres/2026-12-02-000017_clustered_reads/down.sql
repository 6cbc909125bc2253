ALTER TABLE web_funnel_steps DROP CONSTRAINT web_funnel_steps_pkey,
    ADD CONSTRAINT web_funnel_steps_pkey PRIMARY KEY (funnel_id, at, event_id);
