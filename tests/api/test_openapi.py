"""The OpenAPI document (`pulse.api.openapi`): every route of the API described, from its own
declaration (a route without one is refused, so a new route cannot be forgotten), valid OpenAPI
3.1, its examples of the types the code answers; a route reads the query parameters it declared
and no other. No database: the document is made from the routes alone."""

import jsonschema_rs
import pytest
import schemathesis
from pydantic import BaseModel, TypeAdapter
from starlette.responses import JSONResponse
from starlette.routing import Route

from pulse.api import openapi, pages
from pulse.api import routes as api
from pulse.api.auth import api_route
from pulse.api.declared import Asked, DeclaredRoute, UndeclaredError
from pulse.inbound.limits import TokenBuckets
from pulse.spec import SLUG

BUCKETS = TokenBuckets(rate_per_s=1, burst=1)


def declared() -> list[DeclaredRoute]:
    return [r for r in api.routes() if isinstance(r, DeclaredRoute)]


def test_every_route_under_api_v1_is_described_with_each_of_its_methods():
    served = api.routes()
    under = {
        (method, route.path)
        for route in served
        if isinstance(route, Route) and route.path.startswith("/api/v1/") and not route.path.endswith("{rest:path}")
        for method in route.methods or ()
        if method != "HEAD"
    }

    document = openapi.document(served)

    described = {(method.upper(), path) for path, methods in document["paths"].items() for method in methods}
    assert described == under
    assert len(described) == 73


def test_a_route_without_its_declaration_is_refused():
    undeclared = api_route("/api/v1/things", lambda call: {}, scope="read", buckets=BUCKETS)
    with pytest.raises(openapi.UndescribedError, match=r"GET /api/v1/things declares no Operation"):
        openapi.document([*api.routes(), undeclared])

    plain = Route("/api/v1/other", lambda request: JSONResponse({}))
    with pytest.raises(openapi.UndescribedError, match=r"/api/v1/other is no DeclaredRoute"):
        openapi.document([*api.routes(), plain])


def test_the_document_is_valid_openapi_3_1_and_its_schemas_valid_json_schema():
    document = openapi.document(api.routes())

    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()  # against the OpenAPI 3.1 meta-schema
    for name, schema in document["components"]["schemas"].items():
        assert jsonschema_rs.meta.is_valid(schema), name


def test_each_operation_names_its_scope_and_its_refusals():
    document = openapi.document(api.routes())
    acknowledge = document["paths"]["/api/v1/alerts/{id}/acknowledge"]["post"]
    patch = document["paths"]["/api/v1/components/{key}"]["patch"]
    listing = document["paths"]["/api/v1/components"]["get"]

    assert (acknowledge["security"], acknowledge["x-scopes"]) == ([{"bearer": ["oncall"]}], ["oncall"])
    assert sorted(acknowledge["responses"]) == ["200", "400", "401", "403", "404", "409", "413", "422", "429", "503"]
    assert sorted(patch["responses"]) == ["200", "400", "401", "403", "404", "409", "412", "413", "422", "429", "503"]
    assert patch["responses"]["200"]["headers"]["ETag"]["required"] is True
    assert patch["responses"]["401"]["headers"]["WWW-Authenticate"]["required"] is True
    assert patch["responses"]["429"]["headers"]["Retry-After"]["required"] is True
    assert [p["name"] for p in patch["parameters"]] == ["key", "If-Match"]
    assert [p["name"] for p in listing["parameters"]] == ["limit", "cursor", "status", "type", "kind"]
    assert listing["parameters"][0]["schema"] == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
    created = document["paths"]["/api/v1/components"]["post"]
    assert [p["name"] for p in created["parameters"]] == ["Idempotency-Key"]
    assert set(created["responses"]["201"]["links"]) >= {"get_components_key", "delete_components_key"}
    body = created["requestBody"]["content"]["application/json"]["schema"]
    assert "ca_file" not in body["properties"] and "key" in body["required"]
    replaced = document["paths"]["/api/v1/components/{key}"]["put"]["requestBody"]["content"]["application/json"]
    assert "key" not in replaced["schema"]["required"]


def test_channels_and_subscribers_are_declared_by_their_resource_with_its_filters_and_spec():
    paths = openapi.document(api.routes())["paths"]
    channels, subscribers = paths["/api/v1/channels"], paths["/api/v1/subscribers"]

    assert [p["name"] for p in channels["get"]["parameters"]] == ["limit", "cursor", "type"]
    assert "webhook" in channels["get"]["parameters"][2]["schema"]["enum"]
    assert subscribers["get"]["parameters"][2]["schema"] == {
        "type": "string",
        "enum": ["email", "phone", "webhook", "push"],
    }
    assert set(channels["post"]["responses"]["201"]["links"]) >= {"get_channels_key", "patch_channels_key"}
    assert subscribers["post"]["responses"]["201"]["links"]["get_subscribers_id"]["parameters"] == {
        "id": "$response.body#/id"
    }
    assert [p["name"] for p in paths["/api/v1/subscribers/{id}"]["put"]["parameters"]] == ["id", "If-Match"]
    replaced = paths["/api/v1/channels/{key}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert "key" not in replaced["required"] and "url" in replaced["properties"]  # write-only: taken, never answered
    answered = openapi.document(api.routes())["components"]["schemas"]["ChannelView"]["properties"]
    assert not {"url", "secret", "endpoint", "keys"} & set(answered)


def test_alert_sources_are_listed_under_a_json_name_and_their_token_is_taken_never_answered():
    document = openapi.document(api.routes())
    sources = document["paths"]["/api/v1/alert-sources"]
    schemas = document["components"]["schemas"]

    assert sources["get"]["operationId"] == "get_alert_sources"
    assert set(schemas["AlertSourcePage"]["properties"]) == {"alert_sources", "next_cursor"}
    assert set(sources["get"]["responses"]["200"]["content"]["application/json"]["example"]) == {
        "alert_sources",
        "next_cursor",
    }
    body = schemas["AlertSourceBody"]
    assert "token" in body["properties"] and "token" not in body["required"]  # a PATCH or PUT without it keeps it
    assert not {"token", "secret"} & set(schemas["AlertSourceView"]["properties"])
    assert set(schemas["SignatureView"]["properties"]) == {"header", "timestamp_header"}


def test_metrics_are_filtered_by_the_key_of_what_they_name_and_an_integrations_credentials_never_answered():
    document = openapi.document(api.routes())
    metrics = document["paths"]["/api/v1/metrics"]["get"]["parameters"]

    assert [p["name"] for p in metrics] == ["limit", "cursor", "integration", "component"]
    assert metrics[2]["schema"] == {"type": "string", "pattern": SLUG}
    answered = document["components"]["schemas"]["IntegrationView"]["properties"]
    assert not {"url", "bearer_token", "password", "api_key", "app_key"} & set(answered)
    taken = document["components"]["schemas"]["IntegrationSpec"]["properties"]
    assert {"url", "bearer_token", "password", "api_key", "app_key"} <= set(taken)


def test_an_escalation_policies_listing_names_them_with_an_underscore_and_a_person_never_answers_push_keys():
    document = openapi.document(api.routes())
    listing = document["paths"]["/api/v1/escalation-policies"]["get"]["responses"]["200"]["content"]
    page = document["components"]["schemas"]["EscalationPolicyPage"]

    assert set(page["properties"]) == {"escalation_policies", "next_cursor"}
    assert set(listing["application/json"]["example"]) == {"escalation_policies", "next_cursor"}
    person = document["components"]["schemas"]["PersonView"]["properties"]
    assert person["push"]["anyOf"] == [{"type": "string"}, {"type": "null"}]  # its host and fingerprint alone
    taken = document["paths"]["/api/v1/people/{key}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert "push" in taken["properties"]  # write-only: taken, never answered


def test_the_examples_are_of_the_types_the_code_answers_and_takes():
    checked = 0
    for route in declared():
        for operation in route.operations.values():
            assert operation is not None
            if operation.example is not None:
                TypeAdapter(operation.answer).validate_python(operation.example, strict=True)
                checked += 1
            if isinstance(operation.body, type) and issubclass(operation.body, BaseModel):
                assert operation.body_example is not None, operation.summary
                operation.body.model_validate(operation.body_example)
    assert checked == 63  # all but DELETE's, which answers no body


def test_a_route_reads_the_query_parameters_it_declared_and_no_other():
    asked = Asked({"limit": "2", "other": "x"}, pages.QUERY)

    assert dict(asked) == {"limit": "2"}
    assert (asked.get("limit"), asked.get("cursor"), pages.limit(asked)) == ("2", None, 2)
    with pytest.raises(UndeclaredError, match="'status' is read but not declared"):
        asked.get("status")
