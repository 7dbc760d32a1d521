from agentbox.canary_mcp.server import main

if __name__ == "__main__":
    main()
