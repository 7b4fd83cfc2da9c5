-- Configuration as files: webhooks and silences read from the provisioning
-- directory carry the file that defines them (its name, e.g. `webhooks.yaml`);
-- NULL for those made through the API. The API refuses to change a provisioned
-- one; the files own it. A provisioned silence also keeps its name, the key it
-- is matched by across reloads.
ALTER TABLE webhooks ADD COLUMN provisioned_from TEXT;
ALTER TABLE silences ADD COLUMN provisioned_from TEXT;
ALTER TABLE silences ADD COLUMN provisioned_name TEXT;
