-- N1 (issue 46b): the producer's INSERT refuses, in the same statement, rows whose operation is stored for another tenant (no extra round trip). True when the row may go; otherwise raises SQLSTATE HR001 with the operation, its tenant and the one given in DETAIL (JSON), so the whole statement stores nothing.
CREATE OR REPLACE FUNCTION hookrelay_operation_tenant_ok(stored_id text, given_id text, stored_tenant text, given_tenant text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF stored_id = given_id AND stored_tenant IS DISTINCT FROM given_tenant THEN
    RAISE EXCEPTION 'operation belongs to another tenant (N1)'
      USING ERRCODE = 'HR001', DETAIL = json_build_object('operationId', given_id, 'registered', stored_tenant, 'given', given_tenant)::text;
  END IF;
  RETURN true;
END
$$;
