# Multi-stage build of a static kairos binary, run as a non-root user.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/kairos ./cmd/kairos

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kairos /usr/local/bin/kairos
USER nonroot:nonroot
EXPOSE 8080
ENV KAIROS_ADDR=:8080 KAIROS_LOG_FORMAT=json
ENTRYPOINT ["/usr/local/bin/kairos"]
CMD ["serve"]
