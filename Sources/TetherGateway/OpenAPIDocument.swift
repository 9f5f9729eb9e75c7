/// The OpenAPI 3.1 document of the v1 API, served as is at `GET /v1/openapi.json`.
enum OpenAPIDocument {
    static let json = #"{"openapi":"3.1.0","info":{"title":"Tether gateway","version":"1"},"paths":{}}"#
}
