"""Training fed by a DataLoader with worker processes: the workers inherit
LD_PRELOAD and run ops (collate) but must not record or break. Python 3.14
starts them from a forkserver process (which imports this file as
__mp_main__, hence the main guard), older Pythons fork them."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 8), torch.randn(32, 4))
    loader = DataLoader(data, batch_size=8, num_workers=2, shuffle=False)
    model = torch.nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.17g}", flush=True)


if __name__ == "__main__":
    main()
